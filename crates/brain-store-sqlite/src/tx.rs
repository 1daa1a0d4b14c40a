//! A SQLite write transaction as `brain_core::flow` needs it: a member of the
//! writer's batch, running `CloseTx`'s portable writes; it keeps to its tenant.

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::flow::CloseTx;
use brain_core::ids::TenantId;
use brain_core::sql::{BoxRow, Conn, Param, Sql};

use crate::batch::Member;

use crate::dialect;

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
    fn search_terms(&self, query: &str) -> Option<String> {
        dialect::fts_query(query)
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

    async fn commit(self) -> Result<(), StoreError> {
        self.0.commit().await
    }

    async fn finish_read(self) -> Result<(), StoreError> {
        self.0.finish_read().await
    }
}
