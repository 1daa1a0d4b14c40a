//! Any replica can serve any MCP connection (SPEC §6).
//!
//! rmcp restores a connection it does not hold in memory by replaying the
//! client's `initialize` from a `SessionStore`, keyed by connection id only.
//! The database keeps those parameters on the connection's row, beside its
//! tenant; this process-local map is the hand-off between the two. The
//! connection middleware fills it from the database (after checking the
//! caller owns the connection) before rmcp looks, and reads what rmcp stored
//! at initialize to save it with the new row. No lookup crosses tenants.
//!
//! Entries are consumed: the one rmcp stores at initialize is taken when the
//! row is written, the one put here for a restore is taken when rmcp loads it.
//! So the map holds in-flight hand-offs only, never one entry per connection;
//! what is left over (a restore that never happened) ages out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use serde_json::Value;

/// Past this many entries, those older than `max_age` are dropped.
const SOFT_CAP: usize = 1_024;

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

    /// The parameters rmcp stored for a new connection, as JSON for the
    /// database; the entry leaves the map.
    pub fn take_json(&self, id: &str) -> Option<Value> {
        self.with(|m| m.remove(id).map(|(_, s)| s.initialize_params))
            .and_then(|p| serde_json::to_value(p).ok())
    }

    /// How many hand-offs are in flight (tests, metrics).
    pub fn len(&self) -> usize {
        self.with(|m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drop entries older than `max_age` (the expiry sweep).
    pub fn prune(&self) {
        let max_age = self.max_age;
        self.with(|m| m.retain(|_, (at, _)| at.elapsed() < max_age));
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
        Ok(self.with(|m| m.remove(id).map(|(_, s)| s)))
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        // The front door refuses larger ones before rmcp sees them; this keeps
        // the bound even if a path around it appears.
        let size = serde_json::to_vec(&state.initialize_params).map_or(usize::MAX, |b| b.len());
        if size <= super::limits::MAX_INIT_PARAMS_BYTES {
            self.insert(id, state.clone());
        }
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        self.forget(id);
        Ok(())
    }
}
