//! A SQLite write transaction as `brain_core::flow` needs it: a member of the
//! writer's batch, running `SqlTx`'s portable writes for its tenant.

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::flow::Receipting;
use brain_core::ids::TenantId;
use brain_store_sqlx::sql::{BoxRow, Conn, Param, Sql, SqlTx};

use crate::group_commit::Member;

use crate::dialect;

/// A write transaction, as `brain_core::flow` needs it, for the tenant it
/// was opened for ([`TenantId::across`] for the expiry sweeps, which span
/// tenants). SQLite has no row-level security: each statement filters on
/// the transaction's tenant, or on the caller's for what a caller records
/// (receipts, elevations, connections), which `SqlWrite` holds to the
/// transaction's.
pub struct Tx(pub(crate) Member, pub(crate) TenantId);

#[async_trait]
impl Conn for Tx {
    fn sql(&self) -> &'static Sql {
        &crate::sql::SQL
    }
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        brain_store_sqlx::execute::<dialect::Lite>(self.0.conn()?, sql, params).await
    }
    async fn fetch_all(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<BoxRow>, StoreError> {
        brain_store_sqlx::fetch_all::<dialect::Lite>(self.0.conn()?, sql, params).await
    }
}

#[async_trait]
impl SqlTx for Tx {
    fn tenant(&self) -> &TenantId {
        &self.1
    }

    async fn commit(mut self, receipt: Option<Receipting<'_>>) -> Result<(), StoreError> {
        if let Some((caller, draft)) = receipt {
            brain_store_sqlx::sql::writes::append_receipt(&mut self, caller, draft, None).await?;
        }
        self.0.commit().await
    }

    async fn finish_read(self) -> Result<(), StoreError> {
        self.0.finish_read().await
    }
}
