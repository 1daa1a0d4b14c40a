//! Any replica can serve any MCP connection (SPEC §6).
//!
//! rmcp restores a connection it does not hold in memory by replaying the
//! client's `initialize` from a `SessionStore`, keyed by connection id only.
//! The database keeps those parameters on the connection's row, beside its
//! tenant; this process-local map is the hand-off between the two. The
//! connection middleware fills it from the database (after checking the
//! caller owns the connection) before rmcp looks, and reads what rmcp stored
//! at initialize to save it with the new row. No lookup crosses tenants.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use serde_json::Value;

/// Entries older than this are dropped when the map grows past `SOFT_CAP`.
const SOFT_CAP: usize = 10_000;

#[derive(Clone, Default)]
pub struct InitParams {
    inner: Arc<Mutex<HashMap<String, (Instant, SessionState)>>>,
    max_age: Duration,
}

impl InitParams {
    pub fn new(max_age: Duration) -> Self {
        Self {
            inner: Arc::default(),
            max_age,
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, (Instant, SessionState)>) -> R) -> R {
        match self.inner.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// The parameters rmcp stored for a new connection, as JSON for the database.
    pub fn take_json(&self, id: &str) -> Option<Value> {
        self.with(|m| m.get(id).map(|(_, s)| s.initialize_params.clone()))
            .and_then(|p| serde_json::to_value(p).ok())
    }

    /// Make a connection known to this replica from its database row.
    pub fn remember_json(&self, id: &str, params: &Value) {
        if self.with(|m| m.contains_key(id)) {
            return;
        }
        if let Ok(p) = serde_json::from_value::<InitializeRequestParams>(params.clone()) {
            self.insert(id, SessionState::new(p));
        }
    }

    pub fn forget(&self, id: &str) {
        self.with(|m| m.remove(id));
    }

    fn insert(&self, id: &str, state: SessionState) {
        let max_age = self.max_age;
        self.with(|m| {
            if m.len() >= SOFT_CAP {
                m.retain(|_, (at, _)| at.elapsed() < max_age);
            }
            m.insert(id.to_owned(), (Instant::now(), state));
        });
    }
}

#[async_trait::async_trait]
impl SessionStore for InitParams {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(self.with(|m| m.get(id).map(|(_, s)| s.clone())))
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        self.insert(id, state.clone());
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        self.forget(id);
        Ok(())
    }
}
