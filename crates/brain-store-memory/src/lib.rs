//! brain-store-memory: brain's write port ([`brain_core::flow::WriteTx`])
//! and its reads over maps in memory: a `brain_core::store::Store` that no
//! server serves. It proves the port small enough for a store to implement
//! in a few hundred lines with no SQL; it runs the flows' unit tests
//! (`brain-core/tests/flow.rs`) and the behaviour story (`tests/story.rs`)
//! with no database, and backs the server's unit tests.
//!
//! - [`tx`]: the write port; [`tables`]: a tenant's rows and what the port
//!   reads of them; [`recall`]: web-search recall; [`reads`]: the tools'
//!   reads; [`briefs`]: the daily briefs; [`store`]: the rest of `Store`
//!   (what it does not keep, it refuses with a backend error that says so).
//!
//! A write transaction holds the whole store's lock from its opening to its
//! end, so writers run one at a time (every lock a SQL store takes is held
//! at once), and works on a copy of its tenant's rows that its commit puts
//! back: dropping it rolls back. Nothing is kept across processes.
#![forbid(unsafe_code)]

mod briefs;
mod reads;
mod recall;
mod store;
mod tables;
mod tx;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::ids::TenantId;
use brain_core::writes::Backend;
use tokio::sync::Mutex;

pub use tables::{Connection, HistoryRow, Tables};
pub use tx::MemoryTx;

/// The store: each tenant's tables, behind one lock.
#[derive(Clone, Default)]
pub struct MemoryStore {
    tenants: Arc<Mutex<HashMap<TenantId, Tables>>>,
    idle_secs: i64,
    connection_idle_secs: i64,
}

impl MemoryStore {
    /// An empty store; an open session idle for `idle_secs` reads as idle,
    /// an MCP connection unused for `connection_idle_secs` no longer counts.
    pub fn new(idle_secs: i64, connection_idle_secs: i64) -> Self {
        Self {
            tenants: Arc::default(),
            idle_secs,
            connection_idle_secs,
        }
    }

    /// A copy of the tenant's committed tables (empty when it has none), for
    /// a test to check what a call wrote.
    pub async fn tables(&self, tenant: &TenantId) -> Tables {
        let all = self.tenants.lock().await;
        all.get(tenant).cloned().unwrap_or_default()
    }
}

#[async_trait]
impl Backend for MemoryStore {
    type Tx = MemoryTx;

    async fn write(&self, tenant: &TenantId) -> Result<MemoryTx, StoreError> {
        let all = self.tenants.clone().lock_owned().await;
        Ok(MemoryTx::open(all, tenant.clone()))
    }

    fn idle_secs(&self) -> i64 {
        self.idle_secs
    }

    fn connection_idle_secs(&self) -> i64 {
        self.connection_idle_secs
    }
}
